/* placeholder, being written */
#include "cli/cli.h"
const char apx_cmd_info_usage[] = "usage: apx info FILE...\n";
int apx_cmd_info(int argc, char **argv) { (void)argc; (void)argv; return 1; }
