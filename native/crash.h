// Fatal-signal crash records (format: native/README.md). See crash.cc.
#pragma once

// Install handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (SA_SIGINFO | SA_ONSTACK), give
// the calling thread an alternate signal stack, and prime backtrace(). Call first thing in main.
// Idempotent.
void install_crash_handler();

// The alternate stack is per thread and not inherited by pthread_create'd threads; without one a
// thread's handler runs on its own stack, which fails only for stack overflows. Call at the top of
// each worker thread to cover that case too. Idempotent per thread; the stack is never freed.
void install_thread_altstack();
