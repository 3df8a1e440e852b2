"""The chain-hash index holds each hash's prefix (chatcore.chain.ChainKey) instead of the whole hash: an index of
random keys a third the size, which a large import dirties and writes back a third as much. The lookup
(compaction.gateway.lookup) finds by the prefix and holds the rows to the whole hash, so it finds the same
messages. The new index is made before the old one goes, so that lookups always have one."""

from django.db import migrations, models

import chatcore.chain


class Migration(migrations.Migration):
    dependencies = [
        ("chatcore", "0012_message_fewer_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="message",
            index=models.Index(chatcore.chain.ChainKey("chain_hash"), name="message_chain_key_idx"),
        ),
        migrations.RemoveIndex(
            model_name="message",
            name="message_chain_idx",
        ),
    ]
