/* callstacks.c - CPU-bound program with known call stacks, for nsys CPU IP/backtrace sampling.
 * main -> run_phase -> {leaf_a, middle -> leaf_b} on the main thread and one worker thread.
 * Build: gcc -O0 -g -fno-omit-frame-pointer -o callstacks callstacks.c -lpthread */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void leaf_a(long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)i * 0.5;
    sink += s;
}

__attribute__((noinline)) static void leaf_b(long n) {
    double s = 1;
    for (long i = 1; i < n; i++) s += 1.0 / (double)i;
    sink += s;
}

__attribute__((noinline)) static void middle(long n) { leaf_b(n); }

__attribute__((noinline)) static void run_phase(double seconds) {
    double end = now() + seconds;
    while (now() < end) {
        leaf_a(200000);
        middle(200000);
    }
}

static void *worker(void *arg) {
    run_phase(*(double *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    pthread_t t;
    pthread_create(&t, NULL, worker, &seconds);
    run_phase(seconds);
    pthread_join(t, NULL);
    printf("%f\n", sink);
    return 0;
}
