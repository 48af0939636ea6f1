"""Celery tasks: task messages that carry job ids; the state lives in the job and row rows."""

from celery import shared_task

from backoffice.jobs import bulk_job_run, bulk_jobs_sweep


@shared_task(name="backoffice.tasks.bulk_job_run_task", ignore_result=True)
def bulk_job_run_task(job_id: int) -> None:
    """Run the job's pending rows. No Celery retries: an unfinished job stays due in its row
    and the sweeper queues it again."""
    bulk_job_run(job_id=job_id)


@shared_task(name="backoffice.tasks.bulk_jobs_sweep_task", ignore_result=True)
def bulk_jobs_sweep_task() -> int:
    """Queue every unfinished job no worker holds: a killed worker only delays a job."""
    ids = bulk_jobs_sweep()
    for job_id in ids:
        bulk_job_run_task.delay(job_id)
    return len(ids)
