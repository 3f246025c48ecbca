/* mpilens-check: validate the MPILENS_* settings of the environment with the runtime's own parser,
 * so `mpilens run` refuses a bad configuration before starting a job. Cvar names and values
 * (MPILENS_CVARS, MPILENS_COMM_CVARS) and the pvar expression are checked through MPI_T of the MPI
 * it is built against, without MPI_Init. Prints one line and exits 1 on the first problem; prints
 * the MPI library it was built for and exits 0 otherwise. */
#include <mpi.h>
#include <regex.h>
#include <stdio.h>

#include "ml_config.h"
#include "mpit_common.h"

int ml_config_load(ml_config_t *cfg, char *err, size_t errlen);

static int check_mpit(const ml_config_t *cfg, char *err, size_t errlen)
{
    const int cvars = (cfg->cvars && cfg->cvars[0]) || (cfg->comm_cvars && cfg->comm_cvars[0]);
    if (cfg->mpit_pvars && cfg->mpit_pvars[0]) {
        regex_t re;
        const int rc = regcomp(&re, cfg->mpit_pvars, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[128];
            regerror(rc, &re, why, sizeof why);
            snprintf(err, errlen, "MPILENS_MPIT_PVARS=%s: not a regular expression (%s)", cfg->mpit_pvars, why);
            return -1;
        }
        regfree(&re);
    }
    if (!cvars) return 0;
    if (mlt_init() != 0) {
        snprintf(err, errlen, "MPI_T_init_thread failed: cannot check MPILENS_CVARS");
        return -1;
    }
    static mlt_req_t reqs[64];
    int n = 0;
    const int rc = mlt_parse_requests(cfg->cvars, cfg->comm_cvars, reqs, 64, &n, err, errlen);
    mlt_finalize();
    return rc;
}

int main(void)
{
    ml_config_t cfg;
    char err[512];
    if (ml_config_load(&cfg, err, sizeof err) != 0 || check_mpit(&cfg, err, sizeof err) != 0) {
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
