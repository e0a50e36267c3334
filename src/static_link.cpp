// What the static idem's link needs beside the program (CMakeLists.txt links this file into the
// static idem alone: idem-pg and every dynamically linked program keep glibc's own functions).
#include <netdb.h>
#include <sys/socket.h>

// A static binary's crtbeginT.o registers the whole .eh_frame with libgcc's frame registry, which
// sorts every FDE of the binary (about 6 ms here) at the first exception thrown, and CLI11 throws
// for --version and --help. The link wraps both calls into these no-ops (CMakeLists.txt), so no
// object is registered and libgcc's _Unwind_Find_FDE falls back to dl_iterate_phdr and the
// sorted table of PT_GNU_EH_FRAME (--eh-frame-hdr), as in a dynamically linked program.
extern "C" void __wrap___register_frame_info(const void*, void*) {}
extern "C" void* __wrap___deregister_frame_info(const void*) { return nullptr; }

// No NSS in the static idem (docs/internals.md, "No NSS in the static idem"). OpenSSL's
// libcrypto.a calls getaddrinfo, getnameinfo and gethostbyname (BIO_lookup_ex and the like, which
// idem never calls), and glibc's would bring its NSS module loader with them. These failures are
// those four functions in the static link: an object's definition is taken before any archive is
// searched for the name, by every linker, so glibc's are not linked at all (a --wrap is not
// enough for lld, which extracts the archive member before it renames the references);
// tests/cli/test_no_nss.sh checks it.
extern "C" int getaddrinfo(const char*, const char*, const addrinfo*, addrinfo** res) {
  *res = nullptr;
  return EAI_FAIL;
}
extern "C" void freeaddrinfo(addrinfo*) {}
extern "C" int getnameinfo(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int) {
  return EAI_FAIL;
}
extern "C" hostent* gethostbyname(const char*) { return nullptr; }
