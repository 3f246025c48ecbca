/* mpilens annotation API.
 *
 * Mark regions of your code so that mpilens reports MPI time, calls and bytes per region:
 *
 * \code
 *   #include <mpilens.h>
 *   mpilens_region_begin("solve");
 *   ...                          // MPI calls here are accounted under "solve"
 *   mpilens_region_end("solve");
 * \endcode
 *
 * Link with -lmpilens-annotate (a library of empty functions, so the program runs unchanged without
 * mpilens); under `mpilens run` the measuring runtime provides the real ones. Regions nest; each
 * thread has its own stack of open regions. Fortran: CALL MPILENS_REGION_BEGIN('solve') and
 * CALL MPILENS_REGION_END('solve'), same library.
 *
 * Errors: these functions never fail and never abort. A region ended out of order, or ended without
 * a matching begin, is counted in the profile's "dropped.region_mismatches".
 */
#ifndef MPILENS_H
#define MPILENS_H

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Open the region `name` (copied; any string) inside the current one.
 *  \param[in] name region name, NUL-terminated */
void mpilens_region_begin(const char *name);

/** \brief Close the innermost open region.
 *  \param[in] name the name it was opened with (checked; NULL skips the check) */
void mpilens_region_end(const char *name);

#ifdef __cplusplus
}
#endif

#endif
