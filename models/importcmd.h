/* importcmd: `specsim import TRACE...`: what the importers and the naming profile read from
 * each trace (importer, records, phase instances, what was ignored), without fitting; with
 * --perf the read speed and peak memory (make bench). docs/importers.md. */
#ifndef IMPORTCMD_H
#define IMPORTCMD_H
/* argv[0] is "import". Exit 0, 2 on a trace that does not load or names no phase. */
int importcmd_main(int argc, char **argv);
#endif
