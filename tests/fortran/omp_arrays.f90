! gfortran's array descriptors under OpenMP offload (gfortran -fopenmp -foffload=disable):
! allocatable, assumed-shape and pointer arrays, a derived type's pointer component (GCC
! 12's OpenMP maps no allocatable components: see acc_arrays.f90), an absent optional
! argument, an array mapped before it is allocated; target, target data, enter/exit
! data, update and use_device_addr; target teams (libgomp's
! teams and Fortran routines, inside the region: see tests/c/teams.c).  On a device with
! memory of its own the host keeps its values until something copies them back.
include "checks.f90"

module arrays
  use checks
  use omp_lib
  use iso_c_binding, only: c_loc, c_ptr, c_associated
  implicit none
  integer, parameter :: n = 100
  type box
    integer :: tag
    real(8), pointer :: c(:)
  end type
contains
  subroutine allocatable_target()
    real(8), allocatable :: a(:)
    integer :: i
    allocate (a(n))
    a = [(real(i, 8), i = 1, n)]
    !$omp target map(tofrom: a)
      do i = 1, n
        a(i) = 2 * a(i) + 1
      end do
    !$omp end target
    call check(all(a == [(2.0d0 * i + 1, i = 1, n)]), __LINE__)
  end subroutine

  subroutine scale(x, f)
    real(8), intent(inout) :: x(:)      ! assumed shape: the dummy's own descriptor
    real(8), intent(in) :: f
    integer :: i
    !$omp target map(tofrom: x) map(to: f)
      do i = 1, size(x)
        x(i) = x(i) * f
      end do
    !$omp end target
  end subroutine

  subroutine assumed_shape_and_sections()
    real(8) :: a(n)
    a = 1
    call scale(a, 3.0d0)
    call check(all(a == 3), __LINE__)
    call scale(a(11:20), 2.0d0)         ! a section: a descriptor with an offset
    call check(all(a(11:20) == 6) .and. all(a(1:10) == 3) .and. all(a(21:) == 3), __LINE__)
  end subroutine

  subroutine enter_update_exit()
    real(8), allocatable :: a(:)
    integer :: i
    allocate (a(n))
    a = 1
    !$omp target enter data map(to: a)
    !$omp target
      do i = 1, n
        a(i) = a(i) + i
      end do
    !$omp end target
    call check(all(a == 1) .or. .not. separate, __LINE__)   ! the device's copy changed
    !$omp target update from(a)
    call check(all(a == [(1.0d0 + i, i = 1, n)]), __LINE__)
    a = -1
    !$omp target update to(a(1:10))
    !$omp target
      a(1) = a(1) + a(10) + a(11)
    !$omp end target
    !$omp target exit data map(from: a)
    call check(a(1) == -2 + 12 .or. .not. separate, __LINE__)
    call check(a(1) == -3 .or. separate, __LINE__)
    call check(all(a(2:10) == -1) .and. all(a(11:) == [(1.0d0 + i, i = 11, n)]) &
               .or. .not. separate, __LINE__)
  end subroutine

  subroutine pointer_array()
    real(8), pointer :: p(:), q(:)
    real(8), target :: t(n)
    integer :: i
    t = 5
    p => t(2:n:2)                       ! strided: the descriptor says how
    !$omp target map(tofrom: p)
      do i = 1, size(p)
        p(i) = p(i) + i
      end do
    !$omp end target
    call check(all(t(2:n:2) == [(5.0d0 + i, i = 1, n / 2)]), __LINE__)
    call check(all(t(1:n:2) == 5), __LINE__)
    nullify (q)
    !$omp target map(tofrom: q) map(from: i)
      i = merge(1, 0, associated(q))
    !$omp end target
    call check(i == 0, __LINE__)
  end subroutine

  subroutine derived_type_component()
    type(box) :: b
    integer :: i
    b%tag = 7
    allocate (b%c(n))
    b%c = 0
    !$omp target data map(tofrom: b%c)
      !$omp target map(tofrom: b%c)
        do i = 1, n
          b%c(i) = i
        end do
      !$omp end target
      call check(all(b%c == 0) .or. .not. separate, __LINE__)
    !$omp end target data
    call check(all(b%c == [(real(i, 8), i = 1, n)]), __LINE__)
    call check(b%tag == 7, __LINE__)
  end subroutine

  subroutine maybe(x, present_now)
    real(8), optional, intent(inout) :: x(:)
    logical, intent(in) :: present_now
    logical :: seen
    !$omp target map(tofrom: x) map(from: seen)
      seen = present(x)
      if (present(x)) x = x + 1
    !$omp end target
    call check(seen .eqv. present_now, __LINE__)
  end subroutine

  subroutine optional_arguments()
    real(8) :: a(10)
    a = 1
    call maybe(present_now=.false.)
    call maybe(a, .true.)
    call check(all(a == 2), __LINE__)
  end subroutine

  subroutine mapped_before_allocated()
    integer, allocatable :: a(:)
    logical :: was
    !$omp target data map(a)
      !$omp target map(from: was)
        was = allocated(a)
      !$omp end target
      call check(.not. was, __LINE__)
      allocate (a(5))
      a = [1, 2, 3, 4, 5]
      !$omp target map(from: was)       ! libgomp maps it anew, now that it has data
        was = allocated(a)
        if (was) a = a * 10
      !$omp end target
      call check(was, __LINE__)
    !$omp end target data
    call check(all(a == [10, 20, 30, 40, 50]) .or. .not. separate, __LINE__)
  end subroutine

  subroutine use_device_address()
    real(8), allocatable, target :: a(:)
    type(c_ptr) :: host, dev
    allocate (a(n))
    a = 4
    host = c_loc(a)
    !$omp target data map(to: a)
      !$omp target data use_device_addr(a)
        dev = c_loc(a)
      !$omp end target data
    !$omp end target data
    call check(c_associated(host, dev) .neqv. separate, __LINE__)
  end subroutine

  subroutine teams()
    integer :: team_of(64), nteams, i
    !$omp target teams num_teams(4) map(from: team_of, nteams)
      if (omp_get_team_num() == 0) nteams = omp_get_num_teams()
      !$omp distribute
      do i = 1, 64
        team_of(i) = omp_get_team_num()
      end do
    !$omp end target teams
    call check(nteams == 4, __LINE__)
    do i = 1, 64                        ! distribute's blocks, a team each
      call check(team_of(i) == (i - 1) / 16, __LINE__)
    end do
  end subroutine
end module

program omp_arrays
  use arrays
  implicit none
  integer :: x
  x = 8
  !$omp target map(to: x)
    x = x + 1
  !$omp end target
  separate = x == 8
  print '(a, l1)', 'separate memory ', separate
  call allocatable_target()
  call assumed_shape_and_sections()
  call enter_update_exit()
  call pointer_array()
  call derived_type_component()
  call optional_arguments()
  call mapped_before_allocated()
  call use_device_address()
  call teams()
  call finish()
end program
