! The checks of the Fortran test programs (included by each): check(ok, __LINE__) counts
! and reports a failed check with its line; finish() stops with status 1 if any failed.
module checks
  implicit none
  integer :: failed = 0
  logical :: separate
contains
  subroutine check(ok, line)
    logical, intent(in) :: ok
    integer, intent(in) :: line
    if (.not. ok) then
      failed = failed + 1
      write (0, '(a, i0, a)') 'line ', line, ': check failed'
    end if
  end subroutine

  subroutine finish()
    if (failed /= 0) then
      write (0, '(i0, a)') failed, ' check(s) failed'
      stop 1
    end if
  end subroutine
end module
