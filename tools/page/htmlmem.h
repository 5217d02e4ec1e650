/* htmlmem: the page's sections on RSS class by class and the diagnosis
 * (figures.h, fig_memory and fig_diagnose), one column or list per input. */
#ifndef MALLOCSHIM_HTMLMEM_H
#define MALLOCSHIM_HTMLMEM_H

#include <stddef.h>
#include <stdio.h>

#include "dump.h"

/* Writes <section id="rss-classes"> and <section id="diagnosis"> for the n
 * inputs d[i], each named label[i] (plain text) in colour colour[i]
 * ("#rrggbb"). */
void htmlmem_sections(FILE *f, const struct dump *const *d, const char *const *label,
                      const char *const *colour, size_t n);

#endif
