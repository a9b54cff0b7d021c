# docs: man pages, installed to $(mandir)/man{1,5,8}.
dist_man_MANS += docs/arenad.8 docs/arenactl.1 docs/arenad.json.5
EXTRA_DIST += docs/protocol.md
EXTRA_DIST += docs/ops.md
