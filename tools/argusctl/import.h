/* argusctl import-kineto FILE... --job J [--rank R] [--collector ADDR]:
 * PyTorch profiler (Kineto) traces into a collector, so an old trace can be
 * diagnosed like a live job.
 *
 * Each file is one rank, streamed through the agent's Kineto reader
 * (agent/sources/kineto.h, memory bounded) and turned into one StepRecord
 * per ProfilerStep#N range: its real start and duration (plus the trace's
 * baseTimeNanoseconds when it has one), its phases from the trace's phase
 * annotations (top-level "## NAME ##" or forward/backward/optimizer ranges
 * of the step: host time, or GPU time when the step has only
 * gpu_user_annotation ones; a phase seen several times in a step is summed
 * and starts at its first occurrence), and its kernels summarized by the
 * agent's summarizer (agent/steps/summarize.h) exactly as the agent does.
 * Rank and world size come from distributedInfo; --rank R is used when a
 * trace has no rank (R + the file's index among the files). The records go
 * to the collector as Batches on the normal Push stream (common/rpc.h) from
 * the agent id "import:HOST:FILE", with the kernel and phase names and the
 * rank's Resource, and the import waits for the collector's ack.
 *
 * A malformed or truncated trace is reported with the byte offset where
 * reading stopped; the steps read before it are still imported (and the
 * exit code is 4). Exit codes are argusctl's: 0 ok, 2 usage, 3 collector
 * unreachable, 4 a trace could not be read (wholly or in part) or the
 * collector refused a batch.
 */
#ifndef ARGUS_ARGUSCTL_IMPORT_H
#define ARGUS_ARGUSCTL_IMPORT_H

/* The import-kineto command. argv is argusctl's whole command line (the
 * first "import-kineto" word is dropped). Returns the exit code. */
int import_kineto_main(int argc, char **argv);

#endif
