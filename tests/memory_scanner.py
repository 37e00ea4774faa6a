"""memory_scanner.py: a lab that reads its own memory for what its grader left there.

SECRETS are the variables a test sets for the grader, with values of its own. source() is a
lab04_attention.cpp that, before the lesson, reads every readable region of its process
(/proc/self/maps, /proc/self/mem: its stack, heap and every page the process it was forked
from left it) for "NAME=" of each secret and for the names of classmates given to it, prints
on stderr one line, "scan: ...", saying what it found and whether it found a marker it wrote on
its own stack (so that a scan that read nothing cannot pass), and exits 3. It keeps every key
it looks for xor-ed, so that no plain copy of one lies in its memory but the ones it finds.
"""
import secrets as random_secrets

MASK = 0x5A
SECRETS = ("SECRET", "GITHUB_TOKEN")
MARKER = "lab4-own-stack-marker"
SCANNED = "own marker on the stack: yes"  # what its report says when the scan read memory


def values():
    """Fresh values for SECRETS, to set in the grader's environment."""
    return {name: "lab04-%s-%s" % (name.lower(), random_secrets.token_hex(8)) for name in SECRETS}


def masked(text):
    return "{%s}" % ", ".join("0x%02x" % (ord(c) ^ MASK) for c in text)


def source(classmates=()):
    """The scanning lab (it includes no LibTorch: it only reads memory)."""
    keys = [(name + "=", True) for name in SECRETS] + [(c, False) for c in classmates]
    arrays = "\n".join("static const unsigned char kKey%d[] = %s;" % (n, masked(k)) for n, (k, _) in enumerate(keys))
    table = "\n".join("    {kKey%d, %d, %s}," % (n, len(k), "true" if value else "false") for n, (k, value) in enumerate(keys))
    reversed_marker = MARKER[::-1]
    return r"""// A lab that reads its own memory: what its grader or a classmate left there.
#include <link.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
%(arrays)s
struct Key {
  const unsigned char* masked;  // the key, each byte xor 0x%(mask)02x: no plain copy in memory
  size_t size;
  bool value;  // "NAME=": what follows it is a value, and is printed
};
static const Key kKeys[] = {
%(table)s
};
static const unsigned char kMarker[] = %(marker)s;
static bool matches(const char* p, const char* end, const unsigned char* key, size_t n) {
  if (size_t(end - p) < n) return false;
  for (size_t i = 0; i < n; ++i)
    if ((unsigned char)(p[i] ^ 0x%(mask)02x) != key[i]) return false;
  return true;
}
static const uintptr_t kPage = 4096;
static char chunk[1 << 16];
// Copies one page of this process's memory, or fails where nothing is mapped (no signal):
// process_vm_readv on itself, which a process that may not open /proc/self/mem can still do;
// where a seccomp filter refuses that call (Docker's default profile), the page is written into
// a pipe and read back (write() fails with EFAULT where nothing is mapped).
static bool page(uintptr_t at, char* to) {
  iovec local{to, kPage}, remote{reinterpret_cast<void*>(at), kPage};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == ssize_t(kPage)) return true;
  static int through[2] = {-1, -1};
  if (through[0] < 0 && pipe(through) != 0) return false;
  if (write(through[1], reinterpret_cast<const void*>(at), kPage) != ssize_t(kPage)) return false;
  return read(through[0], to, kPage) == ssize_t(kPage);
}
// The mapped pages around an address, up and down until one is not.
static std::pair<uintptr_t, uintptr_t> around(uintptr_t a, size_t most = size_t(1) << 30) {
  uintptr_t lo = a & ~(kPage - 1), hi = lo;
  while (hi - lo < most && page(hi, chunk)) hi += kPage;
  while (lo > kPage && hi - lo < most && page(lo - kPage, chunk)) lo -= kPage;
  return {lo, hi};
}
static std::vector<std::pair<uintptr_t, uintptr_t>> regions;
static int loaded(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_W)) {  // data, not code
      uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
      regions.push_back({a & ~(kPage - 1), a + info->dlpi_phdr[i].p_memsz});
    }
  return 0;
}
int main() {
  volatile char marker[64];  // written here, on the stack: the scan must find it
  const char* backwards = "%(reversed)s";
  size_t m = std::strlen(backwards);
  for (size_t i = 0; i < m; ++i) marker[i] = backwards[m - 1 - i];
  marker[m] = 0;
  // Where to look: every region /proc/self/maps lists that the process can write (its stack,
  // heap and data: what a process it was forked from may have left; a file mapped read-only
  // holds the file's bytes alone), where it can be read; else (a process
  // that is not dumpable may not) the stack (the environment strings sit at its top, by
  // getauxval(AT_EXECFN)), the heap, and every loaded object's writable segments.
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[1024];
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0};
    while (std::fgets(line, sizeof line, maps))
      if (std::sscanf(line, "%%lx-%%lx %%7s", &lo, &hi, perms) == 3 && perms[0] == 'r' && perms[1] == 'w')
        regions.push_back({lo, hi});
    std::fclose(maps);
  }
  if (regions.empty()) {
    regions.push_back(around(reinterpret_cast<uintptr_t>(&marker[0])));
    if (uintptr_t exe = getauxval(AT_EXECFN)) regions.push_back(around(exe));
    void* heap = std::malloc(64);
    regions.push_back(around(reinterpret_cast<uintptr_t>(heap)));
    dl_iterate_phdr(loaded, nullptr);
  }
  std::string found;
  bool own = false;
  size_t pages = 0;
  static char window[2 * 4096];
  for (auto [lo, hi] : regions) {
    bool had = false;
    for (uintptr_t a = lo & ~(kPage - 1); a < hi; a += kPage) {
      if (had) std::memcpy(window, window + kPage, kPage);  // the page before: no key cut in two
      if (!page(a, window + kPage)) {
        had = false;
        continue;
      }
      ++pages;
      const char* from = had ? window : window + kPage;
      const char* end = window + 2 * kPage;
      // Each key's first byte found by memchr (fast), the rest compared there.
      const char first = char(kMarker[0] ^ 0x%(mask)02x);
      for (const char* p = from; (p = static_cast<const char*>(std::memchr(p, first, end - p))); ++p)
        if (matches(p, end, kMarker, sizeof kMarker)) own = true;
      for (const Key& k : kKeys) {
        const char head = char(k.masked[0] ^ 0x%(mask)02x);
        for (const char* p = from; (p = static_cast<const char*>(std::memchr(p, head, end - p))); ++p) {
          if (!matches(p, end, k.masked, k.size)) continue;
          std::string what(p, k.value ? std::min<size_t>(k.size + 48, size_t(end - p)) : k.size);
          what = what.substr(0, what.find('\0'));
          if (found.find(what) == std::string::npos) found += what + " | ";
        }
      }
      had = true;
    }
  }
  for (char& c : found) c = (c < 32 || c > 126) ? '?' : c;
  std::fprintf(stderr, "scan: %%zu pages; own marker on the stack: %%s; found: %%s\n", pages,
               own ? "yes" : "no", found.empty() ? "nothing" : found.c_str());
  return 3;
}
""" % {"mask": MASK, "arrays": arrays, "table": table, "marker": masked(MARKER), "reversed": reversed_marker}
