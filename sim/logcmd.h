/* logcmd: the `specsim log` subcommand (docs/sglang.md): SGLang server logs in, the
 * acceptance per batch size out (accept length, and the alpha for --acceptance when the
 * speculative shape is known), and with --model each logged interval simulated at its batch
 * size, accept length and CUDA-graph state and compared with its logged throughput. */
#ifndef LOGCMD_H
#define LOGCMD_H
/* argv[0] is "log". Exit status 0, 2 on bad input (a log without Decode batch lines, bad
 * flags), 1 on a failed simulation. */
int logcmd_main(int argc, char **argv);
#endif
