"""The request id travels with the tasks a request enqueues (django-q2's signals, so that every
`async_task` of the project and of others is covered): stored in the task's package when it is
enqueued, made the worker's context when the task runs, so the task's log lines and model calls
carry the id of the request that caused them. A task enqueued outside any request (the scheduled
scan) runs under a new id of its own."""

from typing import Any

from django.dispatch import receiver
from django_q.signals import pre_enqueue, pre_execute

from chatcore.observability.context import current, current_request_id, work_begin

TASK_KEY = "request_id"


@receiver(pre_enqueue, dispatch_uid="compaction.observability.request_id_enqueue")
def request_id_enqueue(sender: Any, task: dict, **kwargs: Any) -> None:
    request_id = current_request_id()
    if request_id:
        task[TASK_KEY] = request_id


@receiver(pre_execute, dispatch_uid="compaction.observability.request_id_execute")
def request_id_execute(sender: Any, task: dict, **kwargs: Any) -> None:
    request_id = task.get(TASK_KEY)
    context = current()
    if context is not None and request_id and context.request_id == request_id:
        return  # run at once in the enqueuing request (django-q2's sync mode): its context stays
    work_begin(request_id=request_id)
