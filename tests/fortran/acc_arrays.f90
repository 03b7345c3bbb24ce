! gfortran's array descriptors under OpenACC (gfortran -fopenacc -foffload=disable):
! allocatable, assumed-shape and pointer arrays, a derived type with an allocatable
! component (deep copy: attach and detach), an absent optional argument; data, parallel,
! enter/exit data, update, host_data, declare and the acc_* routines on Fortran arrays.
! On a device with memory of its own the host keeps its values until something copies
! them back, and reference counts decide what stays present.
include "checks.f90"

module arrays
  use checks
  use openacc
  use iso_c_binding, only: c_loc, c_ptr, c_associated
  implicit none
  integer, parameter :: n = 100
  type box
    integer :: tag
    real(8), allocatable :: c(:)
  end type
contains
  subroutine data_parallel_update()
    real(8), allocatable :: a(:)
    integer :: i
    allocate (a(n))
    a = 1
    !$acc data copy(a)
      call check(acc_is_present(a), __LINE__)
      !$acc parallel loop present(a)
      do i = 1, n
        a(i) = a(i) + i
      end do
      call check(all(a == 1) .or. .not. separate, __LINE__)
      !$acc update self(a(1:10))
      call check(all(a(1:10) == [(1.0d0 + i, i = 1, 10)]), __LINE__)
      call check(all(a(11:) == 1) .or. .not. separate, __LINE__)
      a(11:) = -5
      !$acc update device(a(11:n))
      !$acc parallel loop present(a)
      do i = 1, n
        a(i) = 2 * a(i)
      end do
    !$acc end data
    call check(.not. acc_is_present(a) .or. .not. separate, __LINE__)
    call check(all(a(1:10) == [(2.0d0 + 2 * i, i = 1, 10)]) .and. all(a(11:) == -10), &
               __LINE__)
  end subroutine

  subroutine add(x, v)
    real(8), intent(inout) :: x(:)      ! assumed shape: the dummy's own descriptor
    real(8), intent(in) :: v
    integer :: i
    !$acc parallel loop copy(x)
    do i = 1, size(x)
      x(i) = x(i) + v
    end do
  end subroutine

  subroutine enter_exit_and_counts()
    real(8), allocatable :: a(:)
    real(8), pointer :: p(:)
    integer :: i
    allocate (a(n), p(n))
    a = 1
    p = 2
    !$acc enter data copyin(a) create(p)
    !$acc enter data copyin(a)                      ! a second dynamic reference
    ! (p itself would be packed into a temporary for acc_is_present's contiguous dummy)
    call check(acc_is_present(a) .and. acc_is_present(p(1), 8 * n), __LINE__)
    call add(a, 10.0d0)             ! present: copy() neither copies in nor out
    call check(all(a == 1) .or. .not. separate, __LINE__)
    !$acc exit data copyout(a)
    call check(all(a == 1) .or. .not. separate, __LINE__)  ! one reference left
    call check(acc_is_present(a), __LINE__)
    !$acc exit data copyout(a)
    call check(all(a == 11), __LINE__)
    call check(.not. acc_is_present(a) .or. .not. separate, __LINE__)
    !$acc parallel loop present(p)
    do i = 1, n
      p(i) = -i
    end do
    !$acc exit data copyout(p(n/2+1:n))            ! a section of the array: its part
    call check(all(p(n/2+1:) == [(-1.0d0 * i, i = n/2+1, n)]), __LINE__)
    call check(all(p(:n/2) == 2) .or. .not. separate, __LINE__)
  end subroutine

  subroutine routines()
    real(8), allocatable :: a(:)
    integer :: i
    allocate (a(n))
    a = 3
    call acc_copyin(a)
    call check(acc_is_present(a), __LINE__)
    !$acc parallel loop present(a)
    do i = 1, n
      a(i) = a(i) * i
    end do
    call check(all(a == 3) .or. .not. separate, __LINE__)
    call acc_update_self(a)
    call check(all(a == [(3.0d0 * i, i = 1, n)]), __LINE__)
    a = 0
    call acc_update_device(a)
    call acc_copyout(a)
    call check(all(a == 0), __LINE__)
    call check(.not. acc_is_present(a) .or. .not. separate, __LINE__)
    call acc_create(a)
    call acc_delete(a)
    call check(.not. acc_is_present(a) .or. .not. separate, __LINE__)
  end subroutine

  subroutine deep_copy()
    type(box) :: b
    integer :: i
    b%tag = 1
    allocate (b%c(n))
    b%c = 0
    !$acc enter data copyin(b)
    !$acc enter data copyin(b%c)                    ! attaches b%c in b's device copy
    !$acc parallel loop present(b)
    do i = 1, n
      b%c(i) = i + b%tag
    end do
    call check(all(b%c == 0) .or. .not. separate, __LINE__)
    !$acc exit data copyout(b%c)                    ! detaches it
    call check(all(b%c == [(1.0d0 + i, i = 1, n)]), __LINE__)
    !$acc exit data copyout(b)
    call check(allocated(b%c) .and. size(b%c) == n .and. b%tag == 1, __LINE__)
  end subroutine

  subroutine maybe(x, present_now)
    real(8), optional, intent(inout) :: x(:)
    logical, intent(in) :: present_now
    logical :: seen
    !$acc data copy(x)
      !$acc serial copyout(seen)
        seen = present(x)
        if (present(x)) x = x + 1
      !$acc end serial
    !$acc end data
    call check(seen .eqv. present_now, __LINE__)
  end subroutine

  subroutine optional_arguments()
    real(8) :: a(10)
    a = 1
    call maybe(present_now=.false.)
    call maybe(a, .true.)
    call check(all(a == 2), __LINE__)
  end subroutine

  subroutine host_data_and_declare()
    real(8), pointer :: p(:)
    real(8) :: d(n)
    !$acc declare create(d)
    type(c_ptr) :: host, dev
    allocate (p(n))
    p = 1
    host = c_loc(p)
    !$acc data copyin(p)
      !$acc host_data use_device(p)
        dev = c_loc(p)
      !$acc end host_data
    !$acc end data
    call check(c_associated(host, dev) .neqv. separate, __LINE__)
    call check(acc_is_present(d), __LINE__)
    d = 5
    !$acc serial present(d)
      d(1) = 7
    !$acc end serial
    call check(d(1) == 5 .or. .not. separate, __LINE__)
    !$acc update self(d(1:1))
    call check(d(1) == 7, __LINE__)
  end subroutine
end module

program acc_arrays
  use arrays
  implicit none
  integer :: probe
  probe = 8                       ! the host plugin's device answers acc_device_host too
  !$acc serial copyin(probe)
    probe = probe + 1
  !$acc end serial
  separate = probe == 8
  print '(a, l1)', 'separate memory ', separate
  call data_parallel_update()
  call add_to_section()
  call enter_exit_and_counts()
  call routines()
  call deep_copy()
  call optional_arguments()
  call host_data_and_declare()
  call finish()
contains
  subroutine add_to_section()
    real(8) :: a(n)
    a = 0
    call add(a(21:30), 1.0d0)
    call check(all(a(21:30) == 1) .and. all(a(1:20) == 0) .and. all(a(31:) == 0), __LINE__)
  end subroutine
end program
