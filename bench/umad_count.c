/* LD_PRELOAD shim for benchmarks: counts the MADs a program sends through libibumad and prints the count at
 * exit ("umad_count: sent N MADs" on stderr), so tools that report nothing (ibnetdiscover, opensm) can be
 * compared by SMPs with ibsmd. With UMAD_COUNT_FILE set, the running count is also kept in that file (8
 * bytes, host order, shared mapping) so a benchmark can read it while the program runs. Preload it after
 * libumad2sim.so. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_long sent;
static atomic_long* live; /* the UMAD_COUNT_FILE mapping, if any */
static int (*real_send)(int, int, void*, int, int, int);

static void report(void) {
  fprintf(stderr, "umad_count: sent %ld MADs\n", (long)atomic_load(&sent));
}

__attribute__((constructor)) static void init(void) {
  atexit(report);
  const char* path = getenv("UMAD_COUNT_FILE");
  if (!path) return;
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0 || ftruncate(fd, sizeof(atomic_long)) != 0) return;
  void* p = mmap(NULL, sizeof(atomic_long), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p != MAP_FAILED) live = p;
}

int umad_send(int portid, int agentid, void* umad, int length, int timeout_ms, int retries) {
  if (!real_send) real_send = (int (*)(int, int, void*, int, int, int))dlsym(RTLD_NEXT, "umad_send");
  atomic_fetch_add(&sent, 1);
  if (live) atomic_fetch_add(live, 1);
  return real_send(portid, agentid, umad, length, timeout_ms, retries);
}
