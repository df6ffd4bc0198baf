/* LD_PRELOAD shim for benchmarks: counts the MADs a program sends through libibumad and prints the count at
 * exit ("umad_count: sent N MADs" on stderr), so tools that report nothing (ibnetdiscover, opensm) can be
 * compared by SMPs with ibsmd. Preload it after libumad2sim.so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_long sent;
static int (*real_send)(int, int, void*, int, int, int);

static void report(void) { fprintf(stderr, "umad_count: sent %ld MADs\n", (long)atomic_load(&sent)); }

__attribute__((constructor)) static void init(void) { atexit(report); }

int umad_send(int portid, int agentid, void* umad, int length, int timeout_ms, int retries) {
  if (!real_send) real_send = (int (*)(int, int, void*, int, int, int))dlsym(RTLD_NEXT, "umad_send");
  atomic_fetch_add(&sent, 1);
  return real_send(portid, agentid, umad, length, timeout_ms, retries);
}
