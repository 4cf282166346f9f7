/*
 * libFuzzer target for the answers `power status`'s one loop reads from a
 * BMC (ipmi/batch.c): the input is a datagram, handed to one session in
 * each stage (the ping, Open Session, RAKP 2 and 4, the cipher suite list,
 * Set Session Privilege Level, Get Chassis Status, Close Session) with
 * fixed keys. Whatever it holds, nothing reads or writes out of bounds and
 * every failure says why.
 */
#include <stdint.h>

#include "ipmi/internal.h"
#include "tests/fuzz/worker.h"

static void fuzz_input(const uint8_t *data, size_t size)
{
	gf_ipmi_batch_feed(data, size);
}
