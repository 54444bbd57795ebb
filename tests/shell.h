// SPDX-License-Identifier: LGPL-2.1-or-later
// Commands and scripts from the tests: a shell command's status and output,
// and a scratch directory that goes away with its contents.
#pragma once

#include <glib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace cudagray::test {

// Runs a shell command; returns its exit status and appends its output
// (stdout and stderr) to *output.
inline int shell(const std::string &command, std::string *output) {
  FILE *pipe = popen(("(" + command + ") 2>&1").c_str(), "r");
  char line[4096];
  while (fgets(line, sizeof line, pipe)) *output += line;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct TempDir {
  std::string path;
  TempDir() {
    gchar *p = g_dir_make_tmp("cudagray-XXXXXX", nullptr);
    path = p;
    g_free(p);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

}  // namespace cudagray::test
