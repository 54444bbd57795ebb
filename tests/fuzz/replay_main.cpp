// SPDX-License-Identifier: LGPL-2.1-or-later
// Runs the fuzz target once on each file named (or each file of each folder
// named) without libFuzzer: the seed corpus and past findings as a test.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool run_file(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes;
  for (int c; (c = std::fgetc(f)) != EOF;) bytes.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int files = 0, failed = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file or folder: %s\n", argv[i]);
      ++failed;
      continue;
    }
    std::vector<std::string> paths;
    if (S_ISDIR(st.st_mode)) {
      DIR *dir = opendir(argv[i]);
      while (dirent *e = readdir(dir))
        if (e->d_name[0] != '.') paths.push_back(std::string(argv[i]) + "/" + e->d_name);
      closedir(dir);
    } else {
      paths.push_back(argv[i]);
    }
    for (const std::string &p : paths) {
      failed += !run_file(p);
      ++files;
    }
  }
  std::printf("%d inputs replayed, %d unreadable\n", files, failed);
  return failed == 0 && files > 0 ? 0 : 1;
}
