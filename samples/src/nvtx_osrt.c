/* nvtx_osrt.c - one process, main thread + 3 pthreads, for nsys --trace=nvtx,osrt.
 * NVTX: push/pop ranges nested 3 levels deep, start/end ranges that overlap, a start/end
 * range started on main and ended on worker 1, marks, a named domain with registered strings
 * and named categories, colours and payloads (int64, uint64, int32, double, float).
 * Threads: named with pthread_setname_np ("worker-N"); main and even workers also with
 * nvtxNameOsThread ("NVTX main", "NVTX worker N") so both name sources show up.
 * OS runtime: contended mutex (all workers leave a pthread barrier and queue on it), condition
 * variables, file write/fsync/read, usleep/nanosleep. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <sys/syscall.h>

#define NWORKERS 3
#define ITERS 4

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static int go = 0, done_iters = 0;
static nvtxDomainHandle_t dom;
static nvtxStringHandle_t s_write, s_read;
static nvtxRangeId_t handoff;          /* started by main, ended by worker 1 */

static void busy(long ns) {            /* spin for ns nanoseconds */
    struct timespec a, b; volatile double x = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do { for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 0.5; clock_gettime(CLOCK_MONOTONIC, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static nvtxEventAttributes_t attr(const char *msg, uint32_t color, uint32_t category) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION; a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB; a.color = color; a.category = category;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII; a.message.ascii = msg;
    return a;
}

static void *worker(void *arg) {
    int id = (int)(long)arg;
    char name[32], path[64];
    snprintf(name, sizeof name, "worker-%d", id);
    pthread_setname_np(pthread_self(), name);
    if (id % 2 == 0) {
        snprintf(name, sizeof name, "NVTX worker %d", id);
        nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
    }
    pthread_mutex_lock(&mtx);                        /* wait for the start signal */
    while (!go) pthread_cond_wait(&cond, &mtx);
    pthread_mutex_unlock(&mtx);

    snprintf(path, sizeof path, "nvtx_osrt_%d_%d.tmp", (int)getpid(), id);
    static char buf[NWORKERS][32768];
    memset(buf[id], 'a' + id, sizeof buf[id]);

    for (int it = 0; it < ITERS; it++) {
        nvtxEventAttributes_t a = attr("iteration", 0xFF00A000, 1);   /* level 1, category 1 */
        a.payloadType = NVTX_PAYLOAD_TYPE_INT64; a.payload.llValue = it;
        nvtxRangePushEx(&a);

        a = attr("compute", 0xFF0000FF, 2);                          /* level 2 */
        a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE; a.payload.dValue = it * 0.5;
        nvtxRangePushEx(&a);
        busy(1000000 + 300000L * id);
        a = attr("inner", 0xFF00FFFF, 0);                            /* level 3 */
        a.payloadType = NVTX_PAYLOAD_TYPE_INT32; a.payload.iValue = -id;
        nvtxRangePushEx(&a);
        busy(300000);
        nvtxRangePop();
        nvtxRangePop();

        pthread_barrier_wait(&barrier);                              /* all at once ... */
        nvtxRangePushA("locked update");                             /* ... onto the mutex */
        pthread_mutex_lock(&mtx);
        busy(1500000);                                               /* long enough to make others wait */
        done_iters++;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&mtx);
        nvtxRangePop();

        a = attr(NULL, 0xFFFF8000, 7);                               /* domain range, registered string */
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED; a.message.registered = s_write;
        a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64; a.payload.ullValue = sizeof buf[id] * 2;
        nvtxDomainRangePushEx(dom, &a);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (write(fd, buf[id], sizeof buf[id]) < 0 || write(fd, buf[id], sizeof buf[id]) < 0) perror("write");
        fsync(fd);
        close(fd);
        nvtxDomainRangePop(dom);
        a.message.registered = s_read; a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT; a.payload.fValue = 1.5f;
        nvtxDomainRangePushEx(dom, &a);
        fd = open(path, O_RDONLY);
        while (read(fd, buf[id], sizeof buf[id]) > 0) {}
        close(fd);
        nvtxDomainRangePop(dom);

        if (it == 1) {
            a = attr("worker mark", 0xFFFF0000, 1);
            a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32; a.payload.uiValue = id;
            nvtxMarkEx(&a);
        }
        if (id == 1 && it == 2) {
            nvtxRangeEnd(handoff);
            a = attr("handoff ended on worker-1", 0xFFFF0000, 7);
            nvtxDomainMarkEx(dom, &a);
        }
        usleep(1000 + 500 * id);
        struct timespec ts = {0, 300000};
        nanosleep(&ts, NULL);
        nvtxRangePop();                                              /* iteration */
    }
    unlink(path);
    return NULL;
}

int main(void) {
    pthread_setname_np(pthread_self(), "main");
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "NVTX main");
    nvtxNameCategoryA(1, "Iterations");
    nvtxNameCategoryA(2, "Compute");
    dom = nvtxDomainCreateA("SampleDomain");
    nvtxDomainNameCategoryA(dom, 7, "File IO");
    s_write = nvtxDomainRegisterStringA(dom, "write file");
    s_read = nvtxDomainRegisterStringA(dom, "read file");

    nvtxMarkA("program start");
    nvtxRangePushA("main");

    nvtxRangeId_t ra = nvtxRangeStartA("overlap A");               /* A and B overlap, not nested */
    busy(300000);
    nvtxEventAttributes_t a = attr("overlap B", 0xFF8000FF, 1);
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE; a.payload.dValue = 3.25;
    nvtxRangeId_t rb = nvtxRangeStartEx(&a);
    busy(300000);
    nvtxRangeEnd(ra);
    busy(300000);
    nvtxRangeEnd(rb);
    nvtxRangeId_t rd = nvtxDomainRangeStartEx(dom, &a);            /* domain start/end range */
    handoff = nvtxRangeStartA("handoff (main -> worker-1)");

    pthread_t th[NWORKERS];
    pthread_barrier_init(&barrier, NULL, NWORKERS);
    nvtxRangePushA("spawn");
    for (long i = 0; i < NWORKERS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    nvtxRangePop();
    usleep(10000);

    pthread_mutex_lock(&mtx);                                        /* release workers, then wait */
    go = 1;
    pthread_cond_broadcast(&cond);
    nvtxRangePushA("wait for workers");
    while (done_iters < NWORKERS * ITERS) pthread_cond_wait(&cond, &mtx);
    pthread_mutex_unlock(&mtx);
    nvtxRangePop();

    nvtxRangePushA("join");
    for (int i = 0; i < NWORKERS; i++) pthread_join(th[i], NULL);
    nvtxRangePop();
    nvtxDomainRangeEnd(dom, rd);
    nvtxRangePop();                                                  /* main */
    nvtxMarkA("program end");
    nvtxDomainDestroy(dom);
    printf("nvtx_osrt: %d iterations done\n", done_iters);
    return 0;
}
