// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's own counters, for the tests and the bench: resident memory,
// and entries of /proc/self (open files, threads).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace harness {

// Resident memory of this process in KiB.
inline long rss_kib() {
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Entries in a /proc/self directory: open files ("fd") or threads ("task");
// -1 when it cannot be read.
inline int proc_entries(const char *what) {
  const std::string path = std::string("/proc/self/") + what;
  DIR *dir = opendir(path.c_str());
  if (!dir) return -1;
  int n = 0;
  while (dirent *e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

}  // namespace harness
