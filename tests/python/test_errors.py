"""The error codes and exception classes of the mmc package come from the loaded libmmc (mmc_err_name over the
range mmc.h gives), so they are MMC_ERRNO_MAP of include/mmc/mmc.h: no copy of the table to drift, class names
without a doubled suffix, the 0.1.0 names kept as aliases."""
import os
import re
import unittest

import mmctest
import mmc
from mmc import _lib, errors


def header_map():
    text = open(os.path.join(mmctest.ROOT, "include", "mmc", "mmc.h")).read()
    block = re.search(r"#define MMC_ERRNO_MAP\(XX\)((?:[^\n]*\\\n)*[^\n]*\n)", text).group(1)
    return {n: int(v) for n, v in re.findall(r"XX\((MMC_[A-Z_]+),\s*(-?\d+),", block)}


class Codes(unittest.TestCase):
    def test_the_codes_are_the_headers_list(self):
        self.assertEqual(mmc.codes, header_map())
        self.assertEqual(_lib.codes, header_map())

    def test_module_constants(self):
        for name, code in header_map().items():
            self.assertEqual(getattr(_lib, name), code, name)

    def test_a_libmmc_without_err_name(self):
        # 0.1.0 has no mmc_err_name(): the names come from its mmc_strerror() text, "MMC_X: what"
        class Old:
            mmc_strerror = _lib.lib.mmc_strerror
        self.assertEqual(_lib.error_codes(Old()), header_map())


class Classes(unittest.TestCase):
    def test_names_without_a_doubled_suffix(self):
        self.assertIs(mmc.error_for(-3105).__class__, mmc.MetaBackupError)
        self.assertIs(mmc.error_for(-3012).__class__, mmc.InternalError)
        self.assertIs(mmc.error_for(-1).__class__, mmc.GenericError)
        self.assertIs(mmc.error_for(-3004).__class__, mmc.TimeoutError)
        self.assertIs(mmc.error_for(-3016).__class__, mmc.NotEnoughMemoryError)
        for code in header_map().values():
            if code:
                name = type(mmc.error_for(code)).__name__
                self.assertNotIn("ErrorError", name)
                self.assertTrue(name.endswith("Error") and name != "Error", name)

    def test_old_names_are_aliases(self):
        self.assertIs(mmc.MetaBackupErrorError, mmc.MetaBackupError)
        self.assertIs(mmc.InternalErrorError, mmc.InternalError)
        self.assertIs(mmc.ErrorError, mmc.GenericError)
        self.assertIs(mmc.NotFoundError, mmc.ObjectNotExistsError)
        with self.assertRaises(mmc.MetaBackupErrorError):
            raise mmc.error_for(-3105, "put k")

    def test_one_class_per_code(self):
        classes = {type(mmc.error_for(c)) for c in header_map().values() if c}
        self.assertEqual(len(classes), len(header_map()) - 1)
        self.assertTrue(all(issubclass(c, mmc.Error) for c in classes))
        self.assertIs(type(mmc.error_for(-3999)), mmc.Error)  # a code the library does not know
        self.assertEqual(errors.class_name("MMC_NOT_LEADER"), "NotLeaderError")

    def test_message(self):
        e = mmc.error_for(-3105, "put k")
        self.assertEqual(e.code, -3105)
        self.assertEqual(e.message, "put k: MMC_META_BACKUP_ERROR: metadata backup failed")


if __name__ == "__main__":
    mmctest.main()
