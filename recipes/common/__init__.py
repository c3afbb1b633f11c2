"""What several recipes share: the Bible sample as the recipes read it (``bible_sample``)."""
