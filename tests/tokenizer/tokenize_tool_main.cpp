// The test tool behind tokenizer_conformance: the same commands the strata binary exposes.
#include "engine/tokenizer/tokenizer_cli.hpp"

int main(int argc, char** argv) { return strata::tokenizer_cli_main(argc, argv); }
