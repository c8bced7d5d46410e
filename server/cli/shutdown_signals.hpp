// SIGTERM/SIGINT handling for `serve`. The signals are blocked before any thread starts, so every thread
// inherits the mask and only the one that calls wait_for_shutdown_signal() ever sees them: no handler runs
// at an arbitrary point of an engine or HTTP thread, and the drain runs on ordinary code paths.
#pragma once

namespace strata {

// Call on the main thread before creating any other thread.
void block_shutdown_signals();
// Waits for SIGTERM or SIGINT and returns which one arrived.
int wait_for_shutdown_signal();
// After the first signal: a second one ends the process at once (exit 130), for an operator who does not
// want to wait for the drain.
void exit_on_second_signal();

}  // namespace strata
