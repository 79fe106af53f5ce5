/* omp_tasks.c - small OpenMP program for nsys --trace=openmp,nvtx,osrt. Must be linked against
 * LLVM libomp (OMPT callbacks); GCC's libgomp gives no OpenMP events in nsys 2022.4.
 * Exercises: parallel for (static and dynamic schedule) with a reduction, a parallel region
 * with critical, an explicit barrier, single, master, an omp_lock_t, and recursive tasks with
 * taskwait. Each phase is wrapped in an NVTX range. */
#include <omp.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <math.h>

#define REPS 2

static double work(int n) { double s = 0; for (int i = 1; i < n; i++) s += sin(i) / i; return s; }

static long fib(int n) {                     /* tasks down to n = 12, then serial */
    if (n < 13) { long a = 0, b = 1; for (int i = 0; i < n; i++) { long t = a + b; a = b; b = t; } return a; }
    long x, y;
    #pragma omp task shared(x)
    x = fib(n - 1);
    #pragma omp task shared(y)
    y = fib(n - 2);
    #pragma omp taskwait
    return x + y;
}

int main(void) {
    omp_lock_t lock;
    omp_init_lock(&lock);
    double total = 0;
    for (int rep = 0; rep < REPS; rep++) {
        nvtxRangePushA("rep");

        nvtxRangePushA("parallel for");
        #pragma omp parallel for schedule(static) reduction(+:total)
        for (int i = 0; i < 24; i++) total += work(20000 + 2000 * (i % 4));
        #pragma omp parallel for schedule(dynamic, 2) reduction(+:total)
        for (int i = 0; i < 24; i++) total += work(10000 + 3000 * (i % 5));
        nvtxRangePop();

        nvtxRangePushA("sync region");
        #pragma omp parallel
        {
            double v = work(30000 * (omp_get_thread_num() + 1));   /* uneven, then wait */
            #pragma omp critical
            total += v;
            #pragma omp barrier
            #pragma omp single
            nvtxMarkA("single");
            #pragma omp master
            total += 1;
            omp_set_lock(&lock);
            total += 0.5;
            omp_unset_lock(&lock);
        }
        nvtxRangePop();

        nvtxRangePushA("tasks");
        long f = 0;
        #pragma omp parallel
        #pragma omp single
        f = fib(16);
        total += f;
        nvtxRangePop();

        nvtxRangePop();
    }
    omp_destroy_lock(&lock);
    printf("omp_tasks: total=%.3f threads=%d\n", total, omp_get_max_threads());
    return 0;
}
