"""Artwork processing: the files of an asset (download, source, print file, thumbnail) and the
print-ready rendering (sizing, rotation, target pixels from the product's print area)."""
