/* One MPI_Allreduce of int32 under SimGrid's SMPI (simulation/smpi.py): every rank
 * starts at simulated time 0 with values (i mod 1000) * (rank + 1), checks the sum of
 * every element exactly, and prints its start and end times and its count of wrong
 * elements.  Usage: smpi_allreduce ELEMENTS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    long elements = argc > 1 ? atol(argv[1]) : 0;
    int *mine = malloc((elements ? elements : 1) * sizeof(int));
    int *sum = malloc((elements ? elements : 1) * sizeof(int));
    for (long i = 0; i < elements; i++)
        mine[i] = (int)(i % 1000) * (rank + 1);
    double started = MPI_Wtime();
    MPI_Allreduce(mine, sum, (int)elements, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double finished = MPI_Wtime();
    long wrong = 0;
    for (long i = 0; i < elements; i++)   /* sum over ranks of (rank + 1) = N(N+1)/2 */
        wrong += sum[i] != (int)(i % 1000) * (world * (world + 1) / 2);
    printf("rank %d started %.9f finished %.9f wrong %ld\n", rank, started, finished, wrong);
    free(mine);
    free(sum);
    MPI_Finalize();
    return 0;
}
