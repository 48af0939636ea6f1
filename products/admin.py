from django.contrib import admin

from products.models import Paper, PrintArea, Product, ProductAttribute, Variant


class ProductAttributeInline(admin.TabularInline):
    model = ProductAttribute
    extra = 0


class PrintAreaInline(admin.TabularInline):
    model = PrintArea
    extra = 0


class VariantInline(admin.TabularInline):
    model = Variant
    extra = 0
    fields = ("attributes", "print_area_sizes")


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("sku", "description", "category", "width", "height", "units",
                    "pages_included", "is_active")  # fmt: skip
    list_filter = ("category", "units", "is_active")
    search_fields = ("sku", "description")
    inlines = [ProductAttributeInline, PrintAreaInline, VariantInline]
    fieldsets = (
        (None, {"fields": ("sku", "description", "category", "is_active")}),
        ("Size", {"fields": ("width", "height", "units")}),
        (
            "Pages and spine (photobooks)",
            {"fields": ("pages_included", "min_pages", "max_pages", "paper", "spine_base_mm")},
        ),
    )


@admin.register(Paper)
class PaperAdmin(admin.ModelAdmin):
    list_display = ("name", "mm_per_page")
    search_fields = ("name",)
