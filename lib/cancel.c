#include "lib/cancel.h"

#include "lib/util.h"

/* How long a cancellable sleep may go without looking at its flag. */
#define CANCEL_POLL_S 0.05

bool gf_cancel_sleep_until(const gf_cancel_flag *cancel, double t)
{
	for (;;) {
		double now = gf_monotime();

		if (cancel && *cancel)
			return true;
		if (now >= t)
			return false;
		gf_sleep_until(t - now > CANCEL_POLL_S ? now + CANCEL_POLL_S : t);
	}
}
