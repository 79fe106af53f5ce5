#!/usr/bin/env bash
# Regenerates the screenshots of docs/views.md (docs/views/*.png): the GUI test opens the starter
# views of the bundled CUDA sample in Paraver's GUI (wxparaver under Xvfb) and, with
# NSYS2PRV_GALLERY set, saves what it shows, reduced to half size and 64 colours.
#
#   scripts/views-gallery.sh          # builds wxparaver first if needed (~10 min cold)
#
# Needs ../shared/tools/wxparaver (or WXPARAVER set to its install prefix) and ImageMagick.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${WXPARAVER:-}" ]]; then
    WXPARAVER=$(../shared/tools/wxparaver/build.sh | tail -1)
fi
export WXPARAVER
export NSYS2PRV_GALLERY=$PWD/docs/views
mkdir -p "$NSYS2PRV_GALLERY"
cargo test -p end-to-end --test all gui_views::starter_views_and_one_of_each_kind_draw_in_paraver \
    -- --exact --nocapture
echo "screenshots in $NSYS2PRV_GALLERY; docs/views.md shows them"
