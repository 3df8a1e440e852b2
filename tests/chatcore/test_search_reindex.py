"""manage.py search_reindex rebuilds the index; searches work the same afterwards."""

from io import StringIO

from django.core.management import call_command

from chatcore import services
from chatcore.search import message_search
from tests.chatcore.factories import ChannelFactory


def test_reindex_keeps_every_message_findable(db):
    channel = ChannelFactory()
    message = services.message_append(channel=channel, user=channel.owner, role="user", content="Quokkas everywhere.")
    out = StringIO()
    call_command("search_reindex", stdout=out)
    assert "Indexed 1 messages" in out.getvalue()
    found = message_search(channel=channel, user=channel.owner, query="quokka")
    assert [hit.message.pk for hit in found.hits] == [message.pk]
    later = services.message_append(channel=channel, user=channel.owner, role="user", content="More quokkas.")
    assert {
        hit.message.pk for hit in message_search(channel=channel, user=channel.owner, query="quokka", context=0).hits
    } == {
        message.pk,
        later.pk,
    }
