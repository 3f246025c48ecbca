/* mpilens-check: validate the MPILENS_* settings of the environment with the runtime's own parser,
 * so `mpilens run` refuses a bad configuration before starting a job. Prints one line and exits 1
 * on the first problem; prints the MPI library it was built for and exits 0 otherwise. */
#include <mpi.h>
#include <stdio.h>

#include "ml_config.h"

int ml_config_load(ml_config_t *cfg, char *err, size_t errlen);

int main(void)
{
    ml_config_t cfg;
    char err[512];
    if (ml_config_load(&cfg, err, sizeof err) != 0) {
        printf("%s\n", err);
        return 1;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    for (int i = 0; i < len; i++)
        if (lib[i] == '\n') {
            lib[i] = 0;
            break;
        }
    printf("ok %s\n", lib);
    return 0;
}
