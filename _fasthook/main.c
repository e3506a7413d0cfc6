/* Entry point of the glibc-only aipager-hook / aipager-statusline ELF.
 *
 * Linked by setup.py with the Cython-generated hook.c, -Wl,--gc-sections and
 * WITHOUT libpython: only the `public` noexcept nogil entry points below are
 * reachable, so the interpreter is never loaded.  A reachable CPython symbol
 * makes that link fail, which is the guard.
 *
 * Built twice: -DAIPAGER_STATUSLINE selects the status-line entry.  The
 * AIPAGER_BUILD_* strings (stage 2's fallback interpreter and site dir, and
 * BOOT, the Python it runs; see stage2.pxi) come from setup.py as -D definitions.
 */
#include <stddef.h>

#ifndef AIPAGER_BUILD_PYTHON
#define AIPAGER_BUILD_PYTHON ""
#endif
#ifndef AIPAGER_BUILD_PYVER
#define AIPAGER_BUILD_PYVER ""
#endif
#ifndef AIPAGER_BUILD_PURELIB
#define AIPAGER_BUILD_PURELIB ""
#endif
#ifndef AIPAGER_BUILD_BOOT
#error "setup.py passes AIPAGER_BUILD_BOOT (aipager.hookpy.entry.BOOT)"
#endif

const char aipager_build_python[] = AIPAGER_BUILD_PYTHON;
const char aipager_build_pyver[] = AIPAGER_BUILD_PYVER;
const char aipager_build_purelib[] = AIPAGER_BUILD_PURELIB;
const char aipager_boot[] = AIPAGER_BUILD_BOOT;

int aipager_hook_main(int argc, char **argv, char **envp);
int aipager_statusline_main(int argc, char **argv, char **envp);

int main(int argc, char **argv, char **envp)
{
#ifdef AIPAGER_STATUSLINE
    return aipager_statusline_main(argc, argv, envp);
#else
    return aipager_hook_main(argc, argv, envp);
#endif
}
