// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's own counters, for the tests and the bench: resident memory,
// entries of /proc/self (open files, threads), each thread's CPU time.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
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

// Each thread's name and CPU time so far, by thread id: schedstat's
// nanoseconds on the CPU (stat's ticks are 10 ms, coarser than a row).
struct ThreadCpu {
  std::string name;
  double seconds = 0;
};

inline std::map<long, ThreadCpu> thread_cpu_times() {
  std::map<long, ThreadCpu> threads;
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return threads;
  while (dirent *e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    ThreadCpu t;
    unsigned long long ns = 0;
    if (FILE *f = std::fopen((task + "/schedstat").c_str(), "r")) {
      if (std::fscanf(f, "%llu", &ns) != 1) ns = 0;
      std::fclose(f);
    }
    t.seconds = static_cast<double>(ns) * 1e-9;
    if (FILE *f = std::fopen((task + "/comm").c_str(), "r")) {
      char name[64] = "";
      if (std::fgets(name, sizeof name, f)) t.name = name;
      std::fclose(f);
      if (!t.name.empty() && t.name.back() == '\n') t.name.pop_back();
    }
    threads[std::strtol(e->d_name, nullptr, 10)] = t;
  }
  closedir(dir);
  return threads;
}

}  // namespace harness
