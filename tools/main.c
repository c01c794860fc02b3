#include "cmd.h"

int main(int argc, char **argv) { return attnops_main(argc, argv); }
