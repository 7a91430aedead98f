/* A library that calls itself libmmc 9.0.0 and has nothing else: the mmc package must refuse it by name. */
const char *mmc_version(void);

const char *mmc_version(void)
{
	return "9.0.0";
}
