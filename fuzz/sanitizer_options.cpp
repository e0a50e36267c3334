// Linked into every fuzz target. The library is built with recoverable UBSan (the top-level
// IDEM_FUZZ flags), which would only print a report and let the fuzzer go on: make any
// undefined behaviour a crash, so it is saved as an artifact like any other failure.
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }
