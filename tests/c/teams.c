/* teams under the shim: GOMP_teams4 (target teams), GOMP_teams_reg (host teams) and the
   omp_*teams* routines stay libgomp's.  A region runs inside libgomp's own host fallback
   (csrc/shim.c), so its teams are libgomp's fallback teams, one after the other, with the
   region's launch arguments; the region is still the device's.  Prints what the region
   saw of its device: "initial I device D". */
#include <stdio.h>
#include <omp.h>
#include "check.h"

#define N 64

int main(void)
{
    int team_of[N], teams = -1, limit = -1, initial = -1, device = -1;
    #pragma omp target teams num_teams(4) thread_limit(3) \
                             map(from: team_of, teams, limit, initial, device)
    {
        if (omp_get_team_num() == 0) {
            teams = omp_get_num_teams();
            #pragma omp parallel num_threads(1)  /* the other routines: not in teams itself */
            {
                limit = omp_get_thread_limit();
                initial = omp_is_initial_device();
                device = omp_get_device_num();
            }
        }
        #pragma omp distribute
        for (int i = 0; i < N; i++)
            team_of[i] = omp_get_team_num();
    }
    CHECK(teams == 4);
    CHECK(limit == 3);
    for (int i = 0; i < N; i++)
        CHECK(team_of[i] == i / (N / 4));       /* distribute's blocks, a team each */
    printf("initial %d device %d\n", initial, device);

    int host_teams = 0, seen[3] = {0, 0, 0};
    #pragma omp teams num_teams(3)               /* on the host: GOMP_teams_reg */
    {
        seen[omp_get_team_num()] = 1;
        if (omp_get_team_num() == 0)
            host_teams = omp_get_num_teams();
    }
    CHECK(host_teams == 3 && seen[0] && seen[1] && seen[2]);
    CHECK(omp_get_num_teams() == 1 && omp_get_team_num() == 0);
    return failures();
}
