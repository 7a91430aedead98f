/*
 * Two decodings of one key-operation request frame compared field by field: the meta server's hand decoder
 * (metaserver/rpc/key_codec.c) against protobuf-c's. Used by the unit test that packs random requests and by the
 * fuzz target that feeds it made-up bytes.
 */
#ifndef MMC_TEST_KEY_FRAMES_H
#define MMC_TEST_KEY_FRAMES_H

#include "mmc.pb-c.h"

/*
 * NULL when a and b hold the same id, body case and body (a KeyBatch body or a PutBatch); else the name of the first
 * field that differs, a static string. Both must have a KeyBatch or PutBatch body: other bodies are not compared.
 */
const char *key_frames_differ(const Mmc__Frame *a, const Mmc__Frame *b);

#endif
