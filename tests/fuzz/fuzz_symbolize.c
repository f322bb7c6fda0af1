/* libFuzzer target: the symbolizer (agent/symbols/symbolize.c) on an
 * arbitrary file as the ELF object a traced process maps (a hostile or
 * truncated library must not crash the agent): open, look up addresses
 * around every symbol, find a function's file offset and map it back; and
 * every line of the input as a /tmp/perf-PID.map line. */
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/symbolize.h"
#include "fuzz_util.h"

static void perf_map_lines(const uint8_t *data, size_t size)
{
    char line[512], name[128];
    uint64_t start, len;
    size_t i = 0;

    while (i < size) {
        size_t n = 0;
        while (i < size && data[i] != '\n' && n < sizeof(line) - 1)
            line[n++] = (char)data[i++];
        line[n] = 0;
        i++;
        (void)symbolize_parse_perf_map_line(line, &start, &len, name, sizeof(name));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"ncclAllReduce", "main", "_init", "nccl*", ""};
    struct symbolize_elf *elf;
    char path[512];
    uint64_t off, vaddr, probe = 0;

    perf_map_lines(data, size);
    fuzz_write("fuzz.so", data, size, path, sizeof(path));
    if (symbolize_elf_open(path, &elf) < 0)
        return 0;
    (void)symbolize_elf_count(elf);
    (void)symbolize_elf_bytes(elf);
    memcpy(&probe, data, size < sizeof(probe) ? size : sizeof(probe));
    for (uint64_t a = 0; a < 64; a++) {
        const char *n = symbolize_elf_lookup(elf, probe + a * 16, &off);
        if (n && !memchr(n, 0, 4096))
            abort();
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (symbolize_elf_file_offset(elf, names[i], &off) == 0)
            (void)symbolize_elf_offset_to_vaddr(elf, off, &vaddr);
    symbolize_elf_free(elf);
    return 0;
}
