/* mpi_nonblocking.c - MPI for 3+ ranks with uneven work, for nsys --trace=mpi,nvtx,osrt.
 * Rank 0 broadcasts a parameter; each iteration every rank does rank-dependent work, exchanges
 * halos with both neighbours with MPI_Irecv/MPI_Isend + MPI_Wait/MPI_Waitall, joins an MPI_Bcast
 * from a rotating root and an MPI_Barrier. NVTX ranges with int64 payloads (iteration number);
 * rank 0 also times the barrier with an NVTX start/end range. */
#define _GNU_SOURCE
#include <mpi.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define ITERS 3
#define N 512

static void busy(long ns) {
    struct timespec a, b; volatile double x = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do { for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 0.5; clock_gettime(CLOCK_MONOTONIC, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void push(const char *msg, long payload) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION; a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII; a.message.ascii = msg;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64; a.payload.llValue = payload;
    nvtxRangePushEx(&a);
}

int main(int argc, char **argv) {
    int rank, size;
    static double sbuf[2][N], rbuf[2][N], bcast[N];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    double param = rank == 0 ? 2.5 : 0;
    MPI_Bcast(&param, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    for (int it = 0; it < ITERS; it++) {
        push("iteration", it);
        push("work", it);
        busy((long)(param * 400000) * (rank + 1));  /* rank 2 works 3x longer than rank 0 */
        nvtxRangePop();

        push("halo", it);
        MPI_Request rq[4];
        MPI_Irecv(rbuf[0], N, MPI_DOUBLE, prev, 10, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(rbuf[1], N, MPI_DOUBLE, next, 11, MPI_COMM_WORLD, &rq[1]);
        MPI_Isend(sbuf[0], N, MPI_DOUBLE, next, 10, MPI_COMM_WORLD, &rq[2]);
        MPI_Isend(sbuf[1], N, MPI_DOUBLE, prev, 11, MPI_COMM_WORLD, &rq[3]);
        busy(200000);                               /* overlap communication with work */
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Waitall(3, &rq[1], MPI_STATUSES_IGNORE);
        nvtxRangePop();

        push("bcast", it % size);
        MPI_Bcast(bcast, N, MPI_DOUBLE, it % size, MPI_COMM_WORLD);
        nvtxRangePop();

        nvtxRangeId_t r = 0;
        if (rank == 0) r = nvtxRangeStartA("barrier wait (rank 0)");
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) nvtxRangeEnd(r);
        nvtxRangePop();
    }
    MPI_Finalize();
    if (rank == 0) printf("mpi_nonblocking: %d ranks, %d iterations\n", size, ITERS);
    return 0;
}
