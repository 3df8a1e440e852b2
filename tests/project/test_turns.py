"""The multi-process test's recovery after a lost connection, against the real message list API.

Fast on purpose: in test_multiprocess.py this path runs only for the clients a kill catches mid-turn,
and it once read the paginated message list as a bare list (KeyError(-1) in every such client).
"""

from chatcore import services
from chatcore.models import Message
from tests.chatcore.factories import ChannelFactory, build_path
from tests.project.turns import Fate, newest_messages, turn_fate


def _get(api):
    def get(path: str) -> tuple[int, bytes]:
        response = api.get(path)
        return response.status_code, response.content

    return get


def test_newest_messages_are_the_end_of_a_path_longer_than_a_page(api, user):
    channel = ChannelFactory(owner=user)
    stored = build_path(channel, 61)  # more than the 50 of a page: the first page is not the end

    newest = newest_messages(_get(api), channel.pk)

    assert [m["id"] for m in newest] == [stored[-2].pk, stored[-1].pk]
    newest_rows = Message.objects.filter(pk__in=[stored[-2].pk, stored[-1].pk]).order_by("depth")
    assert [m["content"] for m in newest] == list(newest_rows.values_list("content", flat=True))
    assert newest_messages(_get(api), ChannelFactory(owner=user).pk) == []


def test_a_turn_stored_without_its_answer_is_asked_to_be_answered(api, user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 60)
    services.message_append(channel=channel, user=user, role="user", content="Client 1, turn 30: deploy?")

    fate = turn_fate(newest_messages(_get(api), channel.pk), "Client 1, turn 30: deploy?")

    assert fate == (Fate.UNANSWERED, None)
    assert Message.objects.filter(channel=channel).count() == 61


def test_a_turn_stored_with_its_answer_takes_the_stored_answer(api, user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 60)
    services.message_append(channel=channel, user=user, role="user", content="Client 1, turn 30: deploy?")
    answer = services.message_append(channel=channel, user=user, role="assistant", content="In small steps.")

    fate, message = turn_fate(newest_messages(_get(api), channel.pk), "Client 1, turn 30: deploy?")

    assert fate == Fate.ANSWERED
    assert message is not None and (message["id"], message["content"]) == (answer.pk, "In small steps.")


def test_a_turn_that_never_arrived_is_sent_again(api, user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 60)

    assert turn_fate(newest_messages(_get(api), channel.pk), "Client 1, turn 30: deploy?") == (Fate.LOST, None)
    assert turn_fate([], "Client 1, turn 0: deploy?") == (Fate.LOST, None)
