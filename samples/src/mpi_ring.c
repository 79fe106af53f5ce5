/* mpi_ring.c - MPI ring for 2+ ranks, for nsys --trace=mpi,nvtx,osrt (one report per rank).
 * Each iteration: NVTX "iteration" > "compute" / "ring" / "allreduce" ranges around blocking
 * MPI_Send/MPI_Recv to the next/previous rank and an MPI_Allreduce. Each rank names its main
 * thread with nvtxNameOsThread ("rank N") and puts a mark in an "MPI-Ring" domain at the end. */
#define _GNU_SOURCE
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ITERS 4
#define N 1024

static void busy(long ns) {
    struct timespec a, b; volatile double x = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do { for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 0.5; clock_gettime(CLOCK_MONOTONIC, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

int main(int argc, char **argv) {
    int rank, size;
    static double sbuf[N], rbuf[N];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char name[32];
    snprintf(name, sizeof name, "rank %d", rank);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    for (int it = 0; it < ITERS; it++) {
        nvtxRangePushA("iteration");
        nvtxRangePushA("compute");
        busy(1000000 + 500000L * rank);
        nvtxRangePop();

        nvtxRangePushA("ring");                 /* even ranks send first, odd ranks receive first */
        for (int i = 0; i < N; i++) sbuf[i] = rank + it;
        if (rank % 2 == 0) {
            MPI_Send(sbuf, N, MPI_DOUBLE, next, it, MPI_COMM_WORLD);
            MPI_Recv(rbuf, N, MPI_DOUBLE, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, N, MPI_DOUBLE, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, N, MPI_DOUBLE, next, it, MPI_COMM_WORLD);
        }
        nvtxRangePop();

        nvtxRangePushA("allreduce");
        double local = rbuf[0], global = 0;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        nvtxRangePop();
        nvtxRangePop();
    }
    nvtxDomainHandle_t dom = nvtxDomainCreateA("MPI-Ring");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION; a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII; a.message.ascii = "ring done";
    a.payloadType = NVTX_PAYLOAD_TYPE_INT32; a.payload.iValue = rank;
    nvtxDomainMarkEx(dom, &a);
    MPI_Finalize();
    if (rank == 0) printf("mpi_ring: %d ranks, %d iterations\n", size, ITERS);
    return 0;
}
