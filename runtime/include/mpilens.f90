! mpilens annotation API for Fortran: `use mpilens` gives the explicit interfaces of the calls that
! mpilens.h declares for C, so a compiler checks every call (a default REAL passed as a counter's
! value, which the implicit interface would hand over as 4 bytes read as 8, is an error at compile
! time). The calls are the same external procedures as without the module (CALL
! MPILENS_REGION_BEGIN('solve') links to the same symbol either way): link with
! -lmpilens-annotate, and under `mpilens run` the measuring runtime provides them.
!
!   use mpilens
!   call mpilens_region_begin('solve')     ! MPI calls here are accounted under "solve"
!   call mpilens_counter_add('atoms', dble(n))
!   call mpilens_region_end('solve')
!
! Names: any characters; trailing blanks are dropped (at most 255 characters are kept). The module
! holds interfaces only (no code): compile this file with your Fortran compiler, or use the
! mpilens.mod installed beside it when it was made by the same compiler.
module mpilens
    implicit none
    private
    public :: mpilens_region_begin, mpilens_region_end, mpilens_counter_add, mpilens_counter_set

    interface
        !> Open the region `name` inside the current one (regions nest; each thread has its own).
        subroutine mpilens_region_begin(name)
            character(len=*), intent(in) :: name
        end subroutine mpilens_region_begin

        !> Close the innermost open region; `name` is checked against the one it was opened with.
        subroutine mpilens_region_end(name)
            character(len=*), intent(in) :: name
        end subroutine mpilens_region_end

        !> Add `value` to the user counter `name` in the current region (its sum per rank).
        subroutine mpilens_counter_add(name, value)
            character(len=*), intent(in) :: name
            double precision, intent(in) :: value
        end subroutine mpilens_counter_add

        !> Set the user counter `name` to `value` (its latest value per rank).
        subroutine mpilens_counter_set(name, value)
            character(len=*), intent(in) :: name
            double precision, intent(in) :: value
        end subroutine mpilens_counter_set
    end interface
end module mpilens
