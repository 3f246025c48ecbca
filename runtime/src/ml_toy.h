/* Toy mode (runtime/src/toy.c): how many threads of each rank called MPI, in toy/rank-NNNNNN.txt.
 * An example of a mode, written by the checklist of docs/architecture.md. */
#ifndef ML_TOY_H
#define ML_TOY_H

#include "ml.h"

int ml_toy_init(void);              /* MPI_Init: the toy/ folder; says why not */
void ml_toy_thread(ml_thread_t *t); /* a thread's first MPI call: count it */
void ml_toy_finish(void);           /* MPI_Finalize: the rank's file */
void ml_toy_emergency(int reason);  /* the process ends early: the file, marked so */

#endif
