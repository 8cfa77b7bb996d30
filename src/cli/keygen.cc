// `dcr keygen FILE`: a job key file (0600) with a new random key, or the next key appended to an
// existing one (key rotation: every line opens, the last one seals).
#include <cstdio>
#include <cstring>

#include "dcr/auth/keyring.h"
#include "src/cli/commands.h"

namespace dcr::cli {

int run_keygen(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: dcr keygen FILE\n\n"
                 "Writes a new random 256-bit job key to FILE (created 0600), or appends the next key to an\n"
                 "existing key file. Pass it to every rank with --key-file: frames are then sealed with\n"
                 "HMAC-SHA-256 (or AES-256-GCM with --encrypt) under the last key, and any key in the file\n"
                 "opens them, so appending a key rotates it between versions.\n");
    return argc == 2 ? 0 : 2;
  }
  uint32_t id = 0;
  const Status st = Keyring::generate(argv[1], &id);
  if (!st.is_ok()) {
    std::fprintf(stderr, "dcr keygen: %s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("dcr keygen: key id %u written to %s (it seals from the next version on)\n", id, argv[1]);
  return 0;
}

}  // namespace dcr::cli
