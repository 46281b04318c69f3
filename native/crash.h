// Fatal-signal crash records (format: native/README.md). See crash.cc.
#pragma once

// Install handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (SA_SIGINFO | SA_ONSTACK), give
// the calling thread an alternate signal stack, and prime backtrace(). Call first thing in main.
// Idempotent. It replaces any handler installed before it, without chaining to it.
void install_crash_handler();

// Put our handler in front of whatever was installed since install_crash_handler() (a Python
// process's faulthandler, enabled after the preloaded object's constructor ran): on a fatal
// signal ours runs first, with the fault's own siginfo and registers, writes the record, then
// calls that handler (faulthandler writes Python's frames and raises again) and the process
// still dies of the signal. Idempotent.
void install_crash_handler_last();

// The alternate stack is per thread and not inherited by pthread_create'd threads; without one a
// thread's handler runs on its own stack, which fails only for stack overflows. Call at the top of
// each worker thread to cover that case too. Idempotent per thread; the stack is never freed.
void install_thread_altstack();
