/* attnops_broken: the attnops CLI with the broken backward kernel
 * (broken_kernel.h) installed, for the tests that prove the harness's
 * verdicts, coordinates and report pages show a faulty kernel. */
#include "broken_kernel.h"
#include "cmd.h"

int main(int argc, char **argv)
{
    broken_kernel_install();
    return attnops_main(argc, argv);
}
