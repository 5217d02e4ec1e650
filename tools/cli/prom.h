/* prom: shimdump --prometheus, the Prometheus text exposition (version
 * 0.0.4) of one or more dumps, one label set per process. It formats what
 * figures.h makes. */
#ifndef MALLOCSHIM_PROM_H
#define MALLOCSHIM_PROM_H

#include <stdio.h>

#include "dump.h"

/* Writes the metrics of the n dumps d[0..n), each metric's HELP and TYPE
 * once, then its samples. */
void prom_write(FILE *f, const struct dump *const *d, size_t n);

#endif
