from django.urls import path

from products.api.views import ProductDetailView, SpineView

urlpatterns = [
    path("products/spine", SpineView.as_view(), name="products-spine"),
    path("products/<str:sku>", ProductDetailView.as_view(), name="products-detail"),
]
