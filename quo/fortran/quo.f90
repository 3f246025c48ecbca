! Module quo: the QUO API 1.4 for Fortran, over mpilens' C library (libquo-<mpi>.so).
! Same names, argument order and kinds as libquo's module: every routine is a subroutine whose last
! argument is the status (QUO_SUCCESS or a QUO_ERR_* code); queries answering yes/no give a logical;
! the context is a type(c_ptr); communicators are default integers.
module quo
    use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_f_pointer
    implicit none

    ! return codes (values of quo.h)
    integer(c_int), parameter :: QUO_SUCCESS = 0, QUO_SUCCESS_ALREADY_DONE = 1, QUO_ERR = 2, &
        QUO_ERR_SYS = 3, QUO_ERR_OOR = 4, QUO_ERR_INVLD_ARG = 5, QUO_ERR_CALL_BEFORE_INIT = 6, &
        QUO_ERR_TOPO = 7, QUO_ERR_MPI = 8, QUO_ERR_NOT_SUPPORTED = 9, QUO_ERR_POP = 10, &
        QUO_ERR_NOT_FOUND = 11
    ! object types
    integer(c_int), parameter :: QUO_OBJ_MACHINE = 0, QUO_OBJ_NUMANODE = 1, QUO_OBJ_SOCKET = 2, &
        QUO_OBJ_CORE = 3, QUO_OBJ_PU = 4, QUO_OBJ_PACKAGE = 5
    ! push policies
    integer(c_int), parameter :: QUO_BIND_PUSH_PROVIDED = 0, QUO_BIND_PUSH_OBJ = 1
    ! create flags
    integer(c_int), parameter :: QUO_CREATE_NO_FLAGS = 0, QUO_CREATE_NO_MT = 1


    ! C entry points, named as in libquo's module (quo_<name>_c)
    interface
        integer(c_int) function quo_version_c(version, subversion) bind(c, name='QUO_version')
            import :: c_int
            integer(c_int), intent(out) :: version, subversion
        end function
        integer(c_int) function quo_create_c(q, comm) bind(c, name='QUO_create_f2c')
            import :: c_ptr, c_int
            type(c_ptr), intent(out) :: q
            integer(c_int), value :: comm
        end function
        integer(c_int) function quo_create_with_flags_c(q, comm, flags) bind(c, name='QUO_create_with_flags_f2c')
            import :: c_ptr, c_int
            type(c_ptr), intent(out) :: q
            integer(c_int), value :: comm, flags
        end function
        integer(c_int) function quo_free_c(q) bind(c, name='QUO_free')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
        end function
        integer(c_int) function quo_nobjs_by_type_c(q, target_type, n) bind(c, name='QUO_nobjs_by_type')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: target_type
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_nobjs_in_type_by_type_c(q, in_type, in_index, obj_type, n) &
                bind(c, name='QUO_nobjs_in_type_by_type')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: in_type, in_index, obj_type
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_cpuset_in_type_c(q, obj_type, in_index, r) bind(c, name='QUO_cpuset_in_type')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: obj_type, in_index
            integer(c_int), intent(out) :: r
        end function
        integer(c_int) function quo_qids_in_type_c(q, obj_type, in_index, n, qids) bind(c, name='QUO_qids_in_type')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: obj_type, in_index
            integer(c_int), intent(out) :: n
            type(c_ptr), intent(out) :: qids
        end function
        integer(c_int) function quo_nqids_c(q, n) bind(c, name='QUO_nqids')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_bind_push_c(q, policy, obj_type, obj_index) bind(c, name='QUO_bind_push')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: policy, obj_type, obj_index
        end function
        integer(c_int) function quo_bind_pop_c(q) bind(c, name='QUO_bind_pop')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
        end function
        integer(c_int) function quo_barrier_c(q) bind(c, name='QUO_barrier')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
        end function
        integer(c_int) function quo_auto_distrib_c(q, obj_type, max_qids, selected) bind(c, name='QUO_auto_distrib')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: obj_type, max_qids
            integer(c_int), intent(out) :: selected
        end function
        integer(c_int) function quo_get_mpi_comm_by_type_c(q, target_type, comm) &
                bind(c, name='QUO_get_mpi_comm_by_type_f2c')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), value :: target_type
            integer(c_int), intent(out) :: comm
        end function
        integer(c_int) function quo_ptr_free_c(p) bind(c, name='QUO_ptr_free')
            import :: c_ptr, c_int
            type(c_ptr), value :: p
        end function
        integer(c_int) function quo_nnumanodes_c(q, n) bind(c, name='QUO_nnumanodes')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_nsockets_c(q, n) bind(c, name='QUO_nsockets')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_ncores_c(q, n) bind(c, name='QUO_ncores')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_npus_c(q, n) bind(c, name='QUO_npus')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_nnodes_c(q, n) bind(c, name='QUO_nnodes')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_id_c(q, n) bind(c, name='QUO_id')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
        integer(c_int) function quo_bound_c(q, n) bind(c, name='QUO_bound')
            import :: c_ptr, c_int
            type(c_ptr), value :: q
            integer(c_int), intent(out) :: n
        end function
    end interface

contains

    subroutine quo_version(version, subversion, ierr)
        integer(c_int), intent(out) :: version, subversion, ierr
        ierr = quo_version_c(version, subversion)
    end subroutine

    subroutine quo_create(q, comm, ierr)
        type(c_ptr), intent(out) :: q
        integer, intent(in) :: comm
        integer(c_int), intent(out) :: ierr
        ierr = quo_create_c(q, int(comm, c_int))
    end subroutine

    subroutine quo_create_with_flags(q, comm, flags, ierr)
        type(c_ptr), intent(out) :: q
        integer, intent(in) :: comm
        integer(c_int), intent(in) :: flags
        integer(c_int), intent(out) :: ierr
        ierr = quo_create_with_flags_c(q, int(comm, c_int), flags)
    end subroutine

    subroutine quo_free(q, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: ierr
        ierr = quo_free_c(q)
    end subroutine

    subroutine quo_nobjs_by_type(q, target_type, out_nobjs, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: target_type
        integer(c_int), intent(out) :: out_nobjs, ierr
        ierr = quo_nobjs_by_type_c(q, target_type, out_nobjs)
    end subroutine

    subroutine quo_nobjs_in_type_by_type(q, in_type, type_index, obj_type, oresult, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: in_type, type_index, obj_type
        integer(c_int), intent(out) :: oresult, ierr
        ierr = quo_nobjs_in_type_by_type_c(q, in_type, type_index, obj_type, oresult)
    end subroutine

    subroutine quo_cpuset_in_type(q, obj_type, type_index, oresult, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: obj_type, type_index
        logical, intent(out) :: oresult
        integer(c_int), intent(out) :: ierr
        integer(c_int) :: r
        r = 0
        ierr = quo_cpuset_in_type_c(q, obj_type, type_index, r)
        oresult = r == 1
    end subroutine

    ! qids comes back allocated (size 0 when no process matches)
    subroutine quo_qids_in_type(q, obj_type, type_index, qids, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: obj_type, type_index
        integer(c_int), allocatable, intent(out) :: qids(:)
        integer(c_int), intent(out) :: ierr
        integer(c_int), pointer :: view(:)
        type(c_ptr) :: p
        integer(c_int) :: n, rc
        n = 0
        ierr = quo_qids_in_type_c(q, obj_type, type_index, n, p)
        if (ierr /= QUO_SUCCESS) n = 0
        allocate(qids(n))
        if (n > 0) then
            call c_f_pointer(p, view, [n])
            qids = view
            rc = quo_ptr_free_c(p)
        end if
    end subroutine

    subroutine quo_nnumanodes(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_nnumanodes_c(q, n)
    end subroutine

    subroutine quo_nsockets(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_nsockets_c(q, n)
    end subroutine

    subroutine quo_ncores(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_ncores_c(q, n)
    end subroutine

    subroutine quo_npus(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_npus_c(q, n)
    end subroutine

    subroutine quo_nnodes(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_nnodes_c(q, n)
    end subroutine

    subroutine quo_nqids(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_nqids_c(q, n)
    end subroutine

    subroutine quo_id(q, n, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: n, ierr
        ierr = quo_id_c(q, n)
    end subroutine

    subroutine quo_bound(q, bound, ierr)
        type(c_ptr), value :: q
        logical, intent(out) :: bound
        integer(c_int), intent(out) :: ierr
        integer(c_int) :: b
        b = 0
        ierr = quo_bound_c(q, b)
        bound = b == 1
    end subroutine

    subroutine quo_bind_push(q, policy, obj_type, obj_index, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: policy, obj_type, obj_index
        integer(c_int), intent(out) :: ierr
        ierr = quo_bind_push_c(q, policy, obj_type, obj_index)
    end subroutine

    subroutine quo_bind_pop(q, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: ierr
        ierr = quo_bind_pop_c(q)
    end subroutine

    subroutine quo_barrier(q, ierr)
        type(c_ptr), value :: q
        integer(c_int), intent(out) :: ierr
        ierr = quo_barrier_c(q)
    end subroutine

    subroutine quo_auto_distrib(q, distrib_over_this, max_qids_per_res_type, oselected, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: distrib_over_this, max_qids_per_res_type
        logical, intent(out) :: oselected
        integer(c_int), intent(out) :: ierr
        integer(c_int) :: s
        s = 0
        ierr = quo_auto_distrib_c(q, distrib_over_this, max_qids_per_res_type, s)
        oselected = s == 1
    end subroutine

    subroutine quo_get_mpi_comm_by_type(q, target_type, comm, ierr)
        type(c_ptr), value :: q
        integer(c_int), value :: target_type
        integer, intent(out) :: comm
        integer(c_int), intent(out) :: ierr
        integer(c_int) :: c
        ierr = quo_get_mpi_comm_by_type_c(q, target_type, c)
        comm = int(c)
    end subroutine

end module quo
