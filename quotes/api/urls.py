from django.urls import path

from quotes.api.views import QuoteCreateView

urlpatterns = [
    path("quotes", QuoteCreateView.as_view(), name="quotes-create"),
]
