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
 * thread has its own stack of open regions. Fortran: CALL MPILENS_REGION_BEGIN('solve'),
 * CALL MPILENS_REGION_END('solve'), CALL MPILENS_COUNTER_ADD('atoms', 1.0D0), same library.
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

/** \brief Open the region `name` of `category`: it is recorded only while the category is enabled
 *  (all are, unless listed in MPILENS_CATEGORIES_OFF or switched off with
 *  mpilens_category_enable), so a library can keep annotations that cost almost nothing when off.
 *  Close it with mpilens_region_end.
 *  \param[in] category category name (at most 32 per process)
 *  \param[in] name region name */
void mpilens_region_begin_in(const char *category, const char *name);

/** \brief Switch a region category on or off (for all threads, from now on).
 *  \param[in] category category name
 *  \param[in] enabled non-zero to record its regions
 *  \return the previous state (1 on, 0 off), or -1 when no more categories fit */
int mpilens_category_enable(const char *category, int enabled);

/** \brief Add value to the user counter `name` (e.g. the atoms or cells this rank worked on), in
 *  the current region. The profile reports its sum per rank; `mpilens` relates it to time.
 *  \param[in] name counter name (at most 64 distinct names per process)
 *  \param[in] value amount to add */
void mpilens_counter_add(const char *name, double value);

/** \brief Set the user counter `name` to value; the profile reports the latest value per rank
 *  (e.g. "efficiency", a rank's GPU or vector efficiency in [0, 1], which scales its time before
 *  load imbalance is computed).
 *  \param[in] name counter name
 *  \param[in] value new value */
void mpilens_counter_set(const char *name, double value);

#ifdef __cplusplus
}
#endif

#endif
