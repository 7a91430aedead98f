/*
 * The corpus replayer for compilers without libFuzzer: runs a fuzz target's LLVMFuzzerTestOneInput over every file
 * named on the command line, or in a directory named there, once each, as `target -runs=0 DIR` does with libFuzzer.
 * Prints one TAP line per directory or file, so meson counts them; a crash or an abort() of the target fails it.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		return -1;
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int run_dir(const char *dir, unsigned *files)
{
	struct dirent **names;
	char path[4096];
	int n = scandir(dir, &names, NULL, alphasort), rc = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			rc |= run_file(path);
			(*files)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int failed = 0, t = 0;

	printf("1..%d\n", argc - 1);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		unsigned files = 1;
		int rc;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			files = 0;
			rc = run_dir(argv[i], &files);
		} else {
			rc = run_file(argv[i]);
		}
		printf("%s %d - %s (%u inputs)\n", rc || !files ? "not ok" : "ok", ++t, argv[i], files);
		failed |= rc || !files;
	}
	return failed;
}
